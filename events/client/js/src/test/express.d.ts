declare module 'express';
